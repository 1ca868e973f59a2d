"""What a run leaves when it fails or is killed, and what the next run does with it.

- A report index that cannot be rebuilt (a damaged table) keeps the last page, marked stale with the one line that
  says why and what makes it again; the tables are inputs of the index, so the next run finds a damaged one.
- A run killed with its process group leaves snakemake's lock files: the next run removes them itself when no writer
  is alive; while a run is alive, a second one says so on one line (its pid) and writes nothing.
- Only a model's training step writes it: a notebook step that finds a model missing or not the one recorded fails
  with one line naming the command that makes it, and the workflow reruns the training step of a model removed.
- A damaged input is found by the first step that reads it, one line outside a traceback, and what papermill ran of
  the failed notebook is kept beside it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from calibrank.atomic import host_name, sha256_file
from calibrank.study.analysis.exports import export_tables
from calibrank.study.data.io import write_queries
from calibrank.study.locks import lock_profiles, run_lock_path, stale_lock_files
from calibrank.study.pipeline import grid, report, schedule, step, train
from calibrank.study.settings.config import load_config
from conftest import REPO
from rankfix import learnable_queries
from test_report import _cut, export_study_tables, write_executed_notebooks
from test_workflow import _jobs, _snakemake

# ---------------------------------------------------------------- the last good page


def test_a_page_that_cannot_be_rebuilt_stays_marked_stale(tmp_root, capsys):
    export_study_tables(tmp_root)
    write_executed_notebooks(tmp_root)
    assert report.main(["smoke"]) == 0
    page, record = (tmp_root / p for p in grid.index_files("smoke"))
    good = page.read_text(encoding="utf-8")
    assert json.loads(record.read_text())["sha256"] == sha256_file(page) and grid.index_is_current("smoke")
    capsys.readouterr()

    table = tmp_root / "reports" / "smoke" / "tables" / "claims_04_calibration.csv"
    _cut(table, "row")
    assert report.main(["smoke"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"report: {table}: sha256 ")
    assert "make nb-04_calibration PROFILE=smoke`" in err and err.endswith(
        "(reports/smoke/index.html: the last page, marked stale)\n"
    )
    text = page.read_text(encoding="utf-8")
    banner = re.search(r"<!-- calibrank: stale -->.*?<!-- /calibrank: stale -->", text, re.S).group(0)
    assert text.replace(banner, "") == good  # the last good page, whole
    assert re.search(r"<body[^>]*>" + re.escape(banner), text)  # at its top
    assert "This page is stale." in banner and "claims_04_calibration.csv: sha256" in banner
    assert "make nb-04_calibration PROFILE=smoke" in banner
    assert not record.exists() and not grid.index_is_current("smoke")  # the next run builds it again

    assert report.main(["smoke"]) == 1  # failing again: one banner, the newest
    assert page.read_text(encoding="utf-8").count("This page is stale.") == 1
    export_study_tables(tmp_root)  # the table written again: the page is built again, without a banner
    assert report.main(["smoke"]) == 0
    assert "calibrank: stale" not in page.read_text(encoding="utf-8") and grid.index_is_current("smoke")


def _made(root: Path, steps: list[grid.Step]) -> Path:
    """Every output of every step, each newer than what it reads, the tables as their notebooks write them, and a
    page with its record; the page's path."""
    pages = [f"reports/smoke/{s.name}.html" for s in steps if s.notebook]
    made = [f for s in steps for f in s.outputs] + pages
    for rel in made:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    for notebook, names in grid.TABLES.items():
        export_tables("smoke", {name: pd.DataFrame({"a": [1, 2]}) for name in names}, notebook=notebook)
    page, record = (root / p for p in grid.index_files("smoke"))
    page.write_text("<html><body><h1>The study</h1></body></html>", encoding="utf-8")
    record.write_text(json.dumps({"sha256": sha256_file(page)}))
    schedule.refresh_code(load_config("smoke"), notebooks=REPO / "notebooks")  # the code keys, as the workflow's
    t = max(p.stat().st_mtime for p in (root / "runs" / "smoke" / "code").iterdir())  # each file made after them
    files = [*made, str(page.relative_to(root)), str(record.relative_to(root))]
    for i, rel in enumerate(files, start=1):
        os.utime(root / rel, (t + i / 1000, t + i / 1000))
    time.sleep(max(0.0, t + len(files) / 1000 + 0.05 - time.time()))
    return page


def test_the_next_run_finds_a_damaged_table_and_keeps_the_page(tmp_root):
    """Every step made and the page built: nothing to do. A table cut after its notebook wrote it is newer than the
    page's record, so the next run rebuilds the index (and nothing else): it refuses the table, and the page stays,
    marked stale, though snakemake removes the outputs of the step that failed."""
    steps = grid.steps(load_config("smoke"))
    page = _made(tmp_root, steps)
    proc = _snakemake(tmp_root, "--cores", "1", "--config", "profile=smoke", "-n")
    assert proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr, proc.stderr[-3000:]

    table = tmp_root / "reports" / "smoke" / "tables" / "efficiency.csv"
    _cut(table, "row")
    assert [s.name for s in schedule.steps(load_config("smoke")) if s.pending] == ["index"]  # the estimate counts it
    proc = _snakemake(tmp_root, "--cores", "1", "--config", "profile=smoke")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and set(re.findall(r"^(?:local)?rule ([\w-]+):$", out, re.M)) == {"index"}, out[-3000:]
    line = next(ln for ln in out.splitlines() if ln.startswith("report: "))
    assert f"{table.relative_to(tmp_root)}: sha256 " in line or f"{table}: sha256 " in line
    assert line.endswith("(reports/smoke/index.html: the last page, marked stale)")
    text = page.read_text(encoding="utf-8")
    assert "<h1>The study</h1>" in text and "This page is stale." in text
    assert not (tmp_root / grid.index_files("smoke")[1]).exists()


# ---------------------------------------------------------------- a killed run, a run alive

FAKE_SNAKEMAKE = """
import json, os, pathlib, sys, time
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if "--unlock" in sys.argv:
    raise SystemExit(0)
profile = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("profile="))
locks = pathlib.Path(".snakemake/locks")
locks.mkdir(parents=True, exist_ok=True)
n = os.environ.get("FAKE_N", "0")
(locks / f"{n}.input.lock").write_text(f"params/{profile}.yaml\\nruns/{profile}/code/index.key\\n")
(locks / f"{n}.output.lock").write_text(f"reports/{profile}/index.json\\n")
while os.environ.get("FAKE_WAIT") and not pathlib.Path(os.environ["FAKE_WAIT"]).exists():
    time.sleep(0.05)
for lock in locks.glob(f"{n}.*.lock"):  # snakemake removes its lock files when it ends
    lock.unlink()
"""


@pytest.fixture
def fake(tmp_root, tmp_path):
    """(run, log): start the launcher with a stand-in for snakemake (named ``snakemake``, as the sweep of live writers
    looks for) that records its arguments, writes lock files as snakemake does and waits for ``FAKE_WAIT``."""
    exe = tmp_path / "bin" / "snakemake"
    exe.parent.mkdir()
    exe.write_text(FAKE_SNAKEMAKE)
    log = tmp_path / "calls.jsonl"

    def run(profile="smoke", *launch, wait=None, n="0", background=False):
        env = dict(os.environ, CALIBRANK_ROOT=str(tmp_root), FAKE_LOG=str(log), FAKE_N=n, FAKE_WAIT=str(wait or ""))
        args = [
            sys.executable,
            "-m",
            "calibrank.study.pipeline.launch",
            profile,
            "--started",
            f"{time.time():.0f}",
            *launch,
            "--",
            sys.executable,
            str(exe),
            "--cores",
            "1",
            "--config",
            f"profile={profile}",
        ]
        if background:
            return subprocess.Popen(
                args,
                cwd=tmp_root,
                env=env,
                start_new_session=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        return subprocess.run(args, cwd=tmp_root, env=env, capture_output=True, text=True, timeout=120)

    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    return run, calls


def _wait_for(path: Path, seconds: float = 60) -> None:
    end = time.time() + seconds
    while not path.exists():
        assert time.time() < end, f"{path} never appeared"
        time.sleep(0.05)


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_a_run_killed_with_its_process_group_is_recovered_by_the_next(tmp_root, tmp_path, fake):
    run, calls = fake
    first = run(wait=tmp_path / "never", background=True)
    locks = tmp_root / ".snakemake" / "locks"
    _wait_for(locks / "0.output.lock")
    assert (run_lock_path(tmp_root, "smoke").with_name(".workflow.lock.holder")).read_text().split()[0] == str(
        first.pid
    )
    os.killpg(first.pid, signal.SIGKILL)  # make report's process group, as a SIGKILL of it leaves it
    first.wait()
    assert sorted(p.name for p in locks.iterdir()) == ["0.input.lock", "0.output.lock"]
    assert stale_lock_files(tmp_root) == (sorted(locks.iterdir()), [])  # no writer alive: every lock file is stale

    again = run()
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines() == [
        f"workflow: the lock of snakemake was left by a run that died (2 lock files, "
        f"no writer alive in {tmp_root}); unlocked it"
    ]
    assert [c[-1] for c in calls()] == ["profile=smoke", "--unlock", "profile=smoke"]  # unlocked, then run
    assert calls()[1] == ["--cores", "1", "--config", "profile=smoke", "--unlock"]


def test_a_second_run_while_one_is_alive_says_so_and_writes_nothing(tmp_root, tmp_path, fake):
    run, calls = fake
    release = tmp_path / "release"
    first = run(wait=release, background=True)
    try:
        _wait_for(tmp_root / ".snakemake" / "locks" / "0.output.lock")
        before = _files(tmp_root)
        second = run("smoke", "--estimate", "--jobs", "1", "--cores", "1")
        assert second.returncode == 2
        assert re.fullmatch(
            rf"workflow: a run of profile smoke is already running \(process {first.pid} on "
            rf"{host_name()}, since [0-9T:-]+\); wait for it to finish, or stop it \(kill {first.pid}\)\n",
            second.stderr,
        ), second.stderr
        assert second.stdout == "" and _files(tmp_root) == before  # no eta.json, no lock removed, nothing
        assert len(calls()) == 1
        # another profile's run beside it goes ahead: the lock files it finds are a live run's, and stay
        beside = run("laptop", n="1")
        assert beside.returncode == 0 and beside.stderr == "", beside.stderr
        assert (tmp_root / ".snakemake" / "locks" / "0.output.lock").exists()
    finally:
        release.touch()
        first.wait(60)
    assert first.returncode == 0


def test_a_dead_runs_lock_files_go_while_another_profiles_run_is_alive(tmp_root, tmp_path, fake):
    run, calls = fake
    release = tmp_path / "release"
    alive = run("laptop", wait=release, n="1", background=True)
    locks = tmp_root / ".snakemake" / "locks"
    try:
        _wait_for(locks / "1.output.lock")
        (locks / "0.input.lock").write_text(f"{tmp_root}/params/smoke.yaml\n{tmp_root}/runs/smoke/code/index.key\n")
        (locks / "0.output.lock").write_text("reports/smoke/index.json\n")  # a killed smoke run's
        assert lock_profiles(locks / "0.input.lock", tmp_root) == {"smoke"}
        stale, live = stale_lock_files(tmp_root)
        assert stale == [locks / "0.input.lock", locks / "0.output.lock"] and {w.profile for w in live} == {"laptop"}
        done = run("smoke")
        assert done.returncode == 0, done.stderr
        assert done.stderr == "workflow: removed 2 lock files of snakemake runs that died (other runs are alive)\n"
        assert "--unlock" not in [c[-1] for c in calls()]  # snakemake --unlock would remove the live run's too
        assert (locks / "1.output.lock").exists()
    finally:
        release.touch()
        alive.wait(60)


def _launch(root, *command: str) -> subprocess.CompletedProcess:
    """``python -m calibrank.study.pipeline.launch smoke -- COMMAND`` in ``root``, as ``make report`` runs it."""
    return subprocess.run(
        [sys.executable, "-m", "calibrank.study.pipeline.launch", "smoke", "--started", "0", "--", *command],
        cwd=root,
        env=dict(os.environ, CALIBRANK_ROOT=str(root)),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_next_run_unlocks_with_snakemake_itself(tmp_root, tmp_path):
    """The lock files a killed snakemake left in a root where nothing runs: the launcher runs snakemake --unlock."""
    locks = tmp_root / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text("reports/smoke/index.json\n")
    snakemake = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--cores", "1"]
    proc = _launch(tmp_root, *snakemake, "--config", "profile=smoke", "-n")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "workflow: the lock of snakemake was left by a run that died (1 lock files" in proc.stderr
    assert not list(locks.glob("*.lock"))  # (the dry run after it makes the folder again, empty)


# ---------------------------------------------------------------- models: trained by their own step


def _training_sets(root: Path, cfg, corpus: str = "chitchat") -> None:
    for split, k, n in (("train", cfg.negatives.train_k, 32), ("valid", cfg.negatives.eval_k, 8)):
        write_queries(
            root / "runs" / "smoke" / "queries" / corpus / f"{split}-{cfg.negatives.train.value}-k{k}.parquet",
            learnable_queries(n, k, seed=len(split)),
        )


def test_only_the_training_step_writes_a_model_and_a_notebook_step_never_trains_one(tmp_root, capsys):
    import torch

    cfg = load_config("smoke")
    _training_sets(tmp_root, cfg)
    assert train.main(["smoke", "bert", "chitchat"]) == 0
    marker = json.loads((tmp_root / grid.marker_path("smoke", "bert-chitchat-seed0")).read_text())
    threads = torch.get_num_threads()
    assert marker["threads"] == threads and marker["from_cache"] is False and marker["not_in_key"] == train.NOT_IN_KEY
    assert capsys.readouterr().out.startswith(
        f"bert-chitchat-seed0: trained with {threads} threads on cpu (this job: "
        f"{threads}; the model key leaves threads and the device out) -> "
    )
    assert train.main(["smoke", "bert", "chitchat"]) == 0  # in the cache: loaded, and said so
    assert capsys.readouterr().out.startswith(f"bert-chitchat-seed0: found in the model cache, trained with {threads} ")
    assert json.loads((tmp_root / grid.marker_path("smoke", "bert-chitchat-seed0")).read_text())["from_cache"] is True

    steps = {s.name: s for s in grid.steps(cfg)}
    bert, timed = steps["03_train-bert-chitchat"], steps["07_efficiency"]
    assert bert.loads == ("bert-chitchat-seed0",) and "bert-chitchat-seed0" in timed.loads
    assert grid.loaded_model_problem(cfg, bert) is None
    folder = tmp_root / marker["model_dir"]
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # one bit: not the model train.json records
    assert grid.loaded_model_problem(cfg, bert) == (
        f"model bert-chitchat-seed0: {marker['model_dir']}/model.safetensors is not the model its train.json records "
        f"(sha256); make it again with `rm -rf {marker['model_dir']} && make nb-03_train-bert-chitchat PROFILE=smoke`"
    )

    shutil.rmtree(folder)  # the model removed from the cache
    (tmp_root / "reports" / "smoke").mkdir(parents=True)
    last = tmp_root / "reports" / "smoke" / "07_efficiency.ipynb"
    last.write_text("{}")
    with pytest.raises(step.StepError) as err:
        step.run_step("smoke", "07_efficiency")  # 07 loads bert's model: it stops before its notebook runs
    assert err.value.status == 2 and str(err.value) == (
        f"07_efficiency: model bert-chitchat-seed0: {marker['model_dir']} holds no trained model (removed since it was "
        f"trained); make it again with `make nb-03_train-bert-chitchat PROFILE=smoke`"
    )
    assert not folder.exists() and last.read_text() == "{}" and not list(last.parent.glob(".tmp-*"))
    # the workflow runs the model's own training step again (pipeline.launch forces it), and the estimate counts it
    assert grid.stale_markers("smoke") == [("bert-chitchat-seed0", folder)]
    assert {s.name for s in schedule.steps(cfg) if s.pending} >= {"train-bert-chitchat-seed0", "03_train-bert-chitchat"}
    (tmp_root / grid.marker_path("smoke", "bert-chitchat-seed0")).unlink()
    assert "model bert-chitchat-seed0 has no marker" in grid.loaded_model_problem(cfg, bert)


def test_a_model_removed_from_the_cache_is_made_again_by_its_training_step(tmp_root):
    """Every step made; bert's seed-0 chitchat model removed from the cache: a run that asks for 07's page (its
    notebook up to date) or for the 03 page the refusal names trains the model again in its own step, then the steps
    that load it, and says so; no notebook step trains it. Snakemake alone finds nothing to do."""
    steps = grid.steps(load_config("smoke"))
    _made(tmp_root, steps)
    marker = tmp_root / grid.marker_path("smoke", "bert-chitchat-seed0")
    mtime = marker.stat().st_mtime
    marker.write_text(json.dumps({"model_dir": "runs/smoke/models/chitchat/bert-seed0-gone"}))
    os.utime(marker, (mtime, mtime))
    snakemake = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--cores", "2"]
    proc = _snakemake(tmp_root, "reports/smoke/07_efficiency.html", "--cores", "2", "--config", "profile=smoke", "-n")
    assert proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr
    loads = {s.name for s in steps if "bert-chitchat-seed0" in s.loads}
    assert loads == {
        "03_train-bert-chitchat",
        "03_train-mc_dropout-chitchat",
        "03_train-temperature-chitchat",
        "03_train-ensemble-chitchat",
        "07_efficiency",
    }
    for target, planned in (
        ("reports/smoke/07_efficiency.html", loads),
        ("reports/smoke/03_train-bert-chitchat.html", {"03_train-bert-chitchat"}),
    ):
        proc = _launch(tmp_root, *snakemake, target, "--config", "profile=smoke", "-n")
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        assert (
            "workflow: train-bert-chitchat-seed0: runs/smoke/models/chitchat/bert-seed0-gone holds no trained "
            "model any more; its training step runs again"
        ) in out.splitlines()
        assert {"train-bert-chitchat-seed0", *planned} <= set(_jobs(out))


# ---------------------------------------------------------------- a damaged input


NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "p",
            "metadata": {"tags": ["parameters"]},
            "outputs": [],
            "source": 'profile = "laptop"',
        },
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "read",
            "metadata": {},
            "outputs": [],
            "source": "from calibrank.study.data.querysets import load_query_set\n"
            "from calibrank.study.settings.config import load_config\n"
            "load_query_set(load_config(profile), 'chitchat', 'test', 'mixed')",
        },
    ],
}


def test_a_damaged_query_set_is_one_line_from_the_first_step_that_reads_it(tmp_root, tmp_path, capsys):
    """A query set halved after 02 wrote it: the step that reads it says so in one line (the file, the command that
    makes it again), without a traceback, and keeps what papermill ran; the training step the same."""
    cfg = load_config("smoke")
    path = write_queries(
        tmp_root / "runs" / "smoke" / "queries" / "chitchat" / "test-mixed-k9.parquet", learnable_queries(40, 9, seed=0)
    )
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "04_calibration.ipynb").write_text(json.dumps(NOTEBOOK))
    report_dir = tmp_root / "reports" / "smoke"
    report_dir.mkdir(parents=True)
    (report_dir / "04_calibration.ipynb").write_text("{}")  # the last run's
    assert step.main(["smoke", "04_calibration", "--notebooks", str(notebooks)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert not any("Traceback" in line for line in err)
    assert err[-1].startswith(f"error: 04_calibration: {path}: not a readable Parquet file (")
    assert err[-1].endswith(
        f"make it again with `rm -f {path} {report_dir / '02_negatives.ipynb'} "
        f"{report_dir / '02_negatives.html'} && make nb-02_negatives PROFILE=smoke` "
        f"(the notebook as it ran: reports/smoke/04_calibration.failed.ipynb)"
    )
    failed = json.loads((report_dir / "04_calibration.failed.ipynb").read_text())
    assert [o["ename"] for c in failed["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"] == [
        "DataError"
    ]
    assert (report_dir / "04_calibration.ipynb").read_text() == "{}" and not list(report_dir.glob(".tmp-*"))

    _training_sets(tmp_root, cfg)
    train_set = tmp_root / "runs" / "smoke" / "queries" / "chitchat" / "train-mixed-k1.parquet"
    train_set.write_bytes(train_set.read_bytes()[:100])
    assert train.main(["smoke", "bert", "chitchat"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"error: train-bert-chitchat-seed0: {train_set}: not a readable Parquet"
    )
    assert "make nb-02_negatives PROFILE=smoke`" in err


def test_a_damaged_query_set_reruns_the_steps_that_read_it_first(tmp_root):
    """Every step made; a test query set changed after 02 wrote it: the next run reruns the steps that read it (the
    03 runs, 07) and what reads them, not 02 nor the training steps, which do not read it."""
    steps = grid.steps(load_config("smoke"))
    _made(tmp_root, steps)
    target = "runs/smoke/queries/chitchat/test-bm25-k9.parquet"
    (tmp_root / target).write_text("cut")
    proc = _snakemake(tmp_root, "--cores", "2", "--config", "profile=smoke", "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    readers = {s.name for s in steps if target in s.inputs}
    assert readers == {s.name for s in steps if s.kind == "predict"} | {"07_efficiency"}
    assert set(_jobs(out)) == readers | {
        "04_calibration",
        "05_risk_aware",
        "06_nota",
        "08_beyond",
        "html",
        "index",
        "all",
    }


# ---------------------------------------------------------------- a step alone takes every core


def test_a_step_no_other_can_run_beside_takes_every_core(tmp_root):
    cfg = load_config("smoke")
    assert schedule.alone(cfg) == {"01_data", "02_negatives", "07_efficiency"}  # nothing made: the whole graph
    chain = {"01_data", "02_negatives", "train-bert-chitchat-seed0", "03_train-bert-chitchat"}
    assert schedule.alone(cfg, ["reports/smoke/03_train-bert-chitchat.html"]) == chain
    assert schedule.alone(cfg, ["03_train-bert-chitchat"]) == chain
    # two notebooks asked for: their trainings may run side by side, and so may they
    assert schedule.alone(
        cfg, ["reports/smoke/03_train-bert-chitchat.html", "reports/smoke/03_train-sngp-chitchat.html"]
    ) == {"01_data", "02_negatives"}
    assert schedule.alone(cfg, ["all"]) == schedule.alone(cfg, ["reports/smoke/index.json"]) == schedule.alone(cfg)
