"""The graph of runs: ``calibrank.study.pipeline.grid.steps`` and ``workflow/Snakefile``, which builds one rule per step.

The step list is checked against counts worked out by hand from the smoke profile and against
invariants of any graph (each file made by one step, every step after the steps it reads). The
Snakefile is checked by dry runs (``snakemake -n``) in a throw-away project root: the jobs it
plans, their threads, commands and resources, its errors, and what it makes again when a
Predictions file is deleted. The smoke graph also runs for real with the local executor; that
test runs every notebook again (as nbval does in ``make test``) and is marked ``slow``, off by
default (``pytest -m slow tests/test_workflow.py`` runs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from calibrank.atomic import sha256_file
from calibrank.study.model.experiment import ranker_conditions
from calibrank.study.pipeline import grid, train
from calibrank.study.settings.config import load_config, run_name, train_runs, training_seeds

REPO = Path(__file__).resolve().parent.parent
SNAKEFILE = REPO / "workflow" / "Snakefile"
SHARES_BERT = {"bert", "mc_dropout", "temperature", "ensemble"}
NOTEBOOK_STEPS = ("01_data", "02_negatives", "04_calibration", "05_risk_aware", "06_nota", "08_beyond", "07_efficiency")


def _snakemake(root: Path, *args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, CALIBRANK_ROOT=str(root))
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _jobs(output: str) -> dict[str, dict]:
    """The jobs of a dry run by rule name: threads, resources and shell command (``-p``)."""
    jobs = {}
    for block in re.split(r"\n(?=rule [\w-]+:\n)", output)[1:]:
        name = block.split(":", 1)[0][len("rule ") :]
        threads = re.search(r"^    threads: (\d+)$", block, re.M)
        resources = re.search(r"^    resources: (.*)$", block, re.M)
        shell = re.search(r"^Shell command: (.*)$", block, re.M)
        output_files = re.search(r"^    output: (.*)$", block, re.M)
        jobs[name] = {
            "threads": int(threads.group(1)) if threads else 1,
            "resources": dict(kv.split("=", 1) for kv in resources.group(1).split(", ")) if resources else {},
            "shell": shell.group(1) if shell else "",
            "output": output_files.group(1).split(", ") if output_files else [],
        }
    return jobs


# ---------------------------------------------------------------- the step list


def test_smoke_steps_match_a_hand_count(tmp_root):
    cfg = load_config("smoke")
    steps = grid.steps(cfg, threads=1, cores=2)
    by_name = {s.name: s for s in steps}
    assert len(by_name) == len(steps)
    # smoke: 8 rankers x 2 training corpora x 2 seeds = 32 runs of notebook 03
    runs = [s for s in steps if s.kind == "predict"]
    assert len(runs) == 32 == len(cfg.rankers.names) * len(cfg.rankers.train_corpora) * len(training_seeds(cfg))
    assert sorted(s.name for s in runs) == sorted(f"03_train-{r}" for r in train_runs(cfg))
    # per corpus x seed: one bert model (bert, mc_dropout, temperature, ensemble member 0 load it), ensemble
    # member 1, focal, sngp, gpf_bert, pg_drr: 6 models x 4 cells = 24 training jobs, each model once
    trains = [s for s in steps if s.kind == "train"]
    assert len(trains) == 24 and {s.model.name for s in trains} == {m.name for m in grid.grid_models(cfg)}
    assert [s.name for s in steps if s.notebook and s.kind != "predict"] == [
        "01_data",
        "02_negatives",
        "04_calibration",
        "05_risk_aware",
        "06_nota",
        "08_beyond",
        "07_efficiency",
    ]
    assert steps[0].name == "01_data" and steps[-1].name == "07_efficiency"

    # what runs alone takes every core; the rest one thread each, so two go side by side on 2 cores
    assert {s.name for s in steps if s.alone} == {"01_data", "02_negatives", "07_efficiency"}
    assert all(s.threads == (2 if s.alone else 1) for s in steps)
    assert {s.threads for s in grid.steps(cfg, threads=3, cores=2)} == {3}

    # a run loads the models it shares: mc_dropout the bert model of its seed, the ensemble all its members
    marker = lambda name: f"runs/smoke/grid/{name}.json"  # noqa: E731
    assert marker("bert-chitchat-seed0") in by_name["03_train-mc_dropout-chitchat"].inputs
    assert {marker("bert-chatterbot-seed1"), marker("ensemble-chatterbot-seed1-member1")} <= set(
        by_name["03_train-ensemble-chatterbot-seed1"].inputs
    )
    # a run that reads its owner's cached logits (temperature, ensemble member 0) comes after the owner's run;
    # MC Dropout samples its own masks and runs beside it
    notebook = lambda run: f"reports/smoke/03_train-{run}.ipynb"  # noqa: E731
    assert notebook("bert-chitchat-seed1") in by_name["03_train-temperature-chitchat-seed1"].inputs
    assert notebook("bert-chatterbot") in by_name["03_train-ensemble-chatterbot"].inputs
    assert not any("/03_train-" in f for f in by_name["03_train-mc_dropout-chitchat"].inputs)
    assert grid.reused_scores(cfg) == {
        run: owner for run, owner in grid.shared_runs(cfg).items() if not run.startswith("mc_dropout")
    }
    assert by_name["03_train-temperature-chitchat-seed1"].parameters == {
        "profile": "smoke",
        "ranker": "temperature",
        "train_corpus": "chitchat",
        "seed": 1,
    }
    for step in runs:
        p = step.parameters
        assert step.name == f"03_train-{run_name(p['ranker'], p['train_corpus'], p['seed'], cfg)}"
        # the executed notebook, then a .npz and a .json per condition it is predicted on
        assert len(step.outputs) == 1 + 2 * len(ranker_conditions(cfg, p["ranker"]))
    # a deterministic ranker is predicted on the 8 test conditions (2 corpora x 4 samplers), MC Dropout on the
    # validation ones too; a further seed's files carry it in their name
    assert len(by_name["03_train-bert-chitchat"].outputs) == 1 + 16
    assert len(by_name["03_train-mc_dropout-chitchat"].outputs) == 1 + 32
    assert (
        "runs/smoke/predictions/sngp/chatterbot/chitchat-test-bm25-k9-seed1.npz"
        in by_name["03_train-sngp-chatterbot-seed1"].outputs
    )


@pytest.mark.parametrize("profile", ["smoke", "laptop-3seeds", "paper"])
def test_every_step_comes_after_what_it_reads(tmp_root, profile):
    cfg = load_config(profile)
    steps = grid.steps(cfg, threads=1, cores=4)
    made: dict[str, str] = {}
    params = {f"params/{p}.yaml" for p in ([profile, "laptop"] if profile == "laptop-3seeds" else [profile])}
    for step in steps:
        for f in step.inputs:
            assert f in made or f in params, (step.name, f)
        assert params <= set(step.inputs)
        for f in step.outputs:
            assert f not in made, f"{f}: made by {made[f]} and {step.name}"
            made[f] = step.name
    predictions = {f for s in steps if s.kind == "predict" for f in s.outputs[1:]}
    for name in grid.ANALYSES:
        assert predictions <= set(next(s for s in steps if s.name == name).inputs)
    last = steps[-1]
    assert last.name == "07_efficiency" and last.alone
    assert {s.outputs[0] for s in steps[:-1] if s.notebook} <= set(last.inputs)


def test_the_tables_of_each_step_are_those_its_notebook_exports():
    """grid.TABLES (outputs of the analysis steps, inputs of the index) lists what each notebook passes to
    export_tables: the keys of the dict literals in the cell that calls it."""
    import ast

    found = {}
    for path in sorted((REPO / "notebooks").glob("0*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and "export_tables(" in source:
                tree = ast.parse(source)
                found[path.stem] = tuple(k.value for d in ast.walk(tree) if isinstance(d, ast.Dict) for k in d.keys)
    assert found == grid.TABLES


def test_steps_and_a_step_check_their_arguments(tmp_root):
    cfg = load_config("smoke")
    with pytest.raises(ValueError, match="threads: expected a positive integer, got 0"):
        grid.steps(cfg, threads=0)
    with pytest.raises(ValueError, match="cores: expected a positive integer, got 1.5"):
        grid.steps(cfg, cores=1.5)
    good = grid.steps(cfg)[0]
    with pytest.raises(ValueError, match="kind: expected one of data, negatives, train"):
        grid.Step(**{**good.__dict__, "kind": "plot"})
    with pytest.raises(ValueError, match="a step runs a notebook or trains a model"):
        grid.Step(**{**good.__dict__, "notebook": None})


def test_steps_command_line_lists_each_step_with_its_parameters(tmp_root, capsys):
    assert grid.main(["steps", "smoke"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    cfg = load_config("smoke")
    assert [line[0] for line in lines] == [s.name for s in grid.steps(cfg)]
    assert [
        "03_train-ensemble-chitchat-seed1",
        "03_train",
        "-p",
        "profile",
        "smoke",
        "-p",
        "ranker",
        "ensemble",
        "-p",
        "train_corpus",
        "chitchat",
        "-p",
        "seed",
        "1",
    ] in lines
    assert ["train-bert-chitchat-seed0", "-"] in lines
    assert ["08_beyond", "08_beyond", "-p", "profile", "smoke"] in lines
    assert grid.main(["steps", "nosuch"]) == 2
    assert "known profiles" in capsys.readouterr().err


# ---------------------------------------------------------------- the grid's models


@pytest.fixture
def grid_root(tmp_root) -> Path:
    """The throw-away root, with one more profile: the paper's with three training seeds."""
    raw = yaml.safe_load((tmp_root / "params" / "paper.yaml").read_text())
    raw["profile"] = "paper_seeds"
    raw.setdefault("rankers", {})["seeds"] = [42, 7, 1234]
    (tmp_root / "params" / "paper_seeds.yaml").write_text(yaml.safe_dump(raw))
    return tmp_root


def test_grid_models_share_the_bert_model(grid_root):
    cfg = load_config("paper_seeds")
    models = {m.name: m for m in grid.grid_models(cfg)}
    runs = grid.run_models(cfg)
    assert (
        runs["mc_dropout-msdialog"] == runs["temperature-msdialog"] == runs["bert-msdialog"] == ["bert-msdialog-seed42"]
    )
    assert runs["ensemble-mantis-seed7"][0] == "bert-mantis-seed7"
    assert runs["ensemble-mantis-seed7"][1:] == [
        f"ensemble-mantis-seed7-member{i}" for i in range(1, cfg.rankers.ensemble.members)
    ]
    assert set(models) == {name for names in runs.values() for name in names}
    assert models["ensemble-mantis-seed7-member2"].args("paper_seeds") == [
        "paper_seeds",
        "ensemble",
        "mantis",
        "--seed",
        "7",
        "--member",
        "2",
    ]
    assert grid.model_for(cfg, "temperature", "udc_dstc8").name == "bert-udc_dstc8-seed42"
    assert grid.model_for(cfg, "ensemble", "udc_dstc8", 1234, 0).name == "bert-udc_dstc8-seed1234"
    assert not grid.model_for(cfg, "pg_drr", "mantis").data_parallel
    for args, message in [
        (("nosuch", "mantis"), "ranker: unknown ranker 'nosuch'"),
        (("bert", "chitchat"), "corpus: 'chitchat' is not among rankers.train_corpora"),
        (("bert", "mantis", 5), r"seed: 5 is not a training seed .*\[42, 7, 1234\]"),
        (("ensemble", "mantis"), "member: ensemble needs --member"),
        (("ensemble", "mantis", None, 9), r"member: expected an index in 0\.\.4"),
        (("focal", "mantis", None, 1), "member: only the ensemble has members"),
    ]:
        with pytest.raises(ValueError, match=message):
            grid.model_for(cfg, *args)


def test_grid_command_line_errors(grid_root, capsys):
    assert train.main(["smoke", "ensemble", "chitchat"]) == 2
    assert "member: ensemble needs --member" in capsys.readouterr().err
    assert train.main(["nosuch", "bert", "chitchat"]) == 2
    assert "known profiles" in capsys.readouterr().err


# ---------------------------------------------------------------- the Snakefile (dry runs)


@pytest.fixture(scope="module")
def smoke_dry_run(tmp_path_factory):
    """(root, jobs) of ``snakemake -n`` for the smoke profile on 2 cores, in a root holding params/ only."""
    root = tmp_path_factory.mktemp("snakemake")
    (root / "params").mkdir()
    for f in (REPO / "params").glob("*.yaml"):
        (root / "params" / f.name).write_bytes(f.read_bytes())
    proc = _snakemake(
        root,
        "--workflow-profile",
        str(REPO / "workflow" / "profiles" / "local"),
        "--cores",
        "2",
        "--config",
        "profile=smoke",
        "-n",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root, _jobs(proc.stdout + proc.stderr)


def test_dry_run_plans_every_step_once_with_its_threads(smoke_dry_run, tmp_root):
    root, jobs = smoke_dry_run
    steps = grid.steps(load_config("smoke"), threads=1, cores=2)
    pages = [s.name for s in steps if s.notebook]
    assert set(jobs) == {s.name for s in steps} | {"html", "index", "all"}
    assert set(NOTEBOOK_STEPS) <= set(pages)
    for step in steps:
        job = jobs[step.name]
        assert job["threads"] == step.threads == (2 if step.name in ("01_data", "02_negatives", "07_efficiency") else 1)
        assert job["output"] == list(step.outputs)
        assert f"OMP_NUM_THREADS={step.threads} " in job["shell"]
        assert f"calibrank.study.pipeline.schedule smoke {step.name} --seconds" in job["shell"]
    # a notebook runs under the step runner (its parameters from grid.steps, its notebook renamed into place when it
    # ran, a failure kept beside it as <step>.failed.ipynb)
    bert = jobs["03_train-bert-chitchat-seed1"]["shell"]
    assert (
        f"-m calibrank.study.pipeline.step smoke 03_train-bert-chitchat-seed1 --notebooks {REPO / 'notebooks'} " in bert
    )
    assert (
        "-m calibrank.study.pipeline.train smoke ensemble chatterbot --seed 0 --member 1"
        in jobs["train-ensemble-chatterbot-seed0-member1"]["shell"]
    )
    assert "-m calibrank.study.pipeline.report smoke" in jobs["index"]["shell"]
    # the index's output is the record of its page; the tables are its inputs
    assert jobs["index"]["output"] == ["reports/smoke/index.json"]
    # a dry run makes nothing but the keys of the code each step reaches (its code input)
    assert not (root / "reports").exists()
    assert {p.parent for p in (root / "runs").rglob("*") if p.is_file()} == {root / "runs" / "smoke" / "code"}


def _expected_kinds(cfg) -> dict[str, int]:
    names = {r.value for r in cfg.rankers.names}
    cells = len(cfg.rankers.train_corpora) * len(training_seeds(cfg))
    own_models = len(names - SHARES_BERT) + (1 if names & SHARES_BERT else 0)
    members = cfg.rankers.ensemble.members - 1 if "ensemble" in names else 0
    return {
        "data": 1,
        "negatives": 1,
        "train": (own_models + members) * cells,
        "predict": len(names) * cells,
        "analysis": 4,
        "efficiency": 1,
    }


def test_cluster_dry_run_asks_resources_by_kind(grid_root):
    profile = "paper_seeds"  # the paper's grid with three training seeds
    cfg = load_config(profile)
    proc = _snakemake(
        grid_root,
        "--workflow-profile",
        str(REPO / "workflow" / "profiles" / "slurm"),
        "--config",
        f"profile={profile}",
        "-n",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jobs = _jobs(proc.stdout + proc.stderr)
    steps = grid.steps(cfg)
    kinds = {k: sum(s.kind == k for s in steps) for k in grid.KINDS}
    assert kinds == _expected_kinds(cfg)
    assert set(jobs) == {s.name for s in steps} | {"html", "index", "all"}
    # the slurm profile's set-resources name kinds: every training job gets the training time, and a GPU
    for step in steps:
        res = jobs[step.name]["resources"]
        assert (
            res["runtime"]
            == {
                "data": "60",
                "negatives": "120",
                "train": "720",
                "predict": "240",
                "analysis": "120",
                "efficiency": "240",
            }[step.kind]
        ), step.name
        assert res.get("gpu") == ("1" if step.kind in ("negatives", "train", "predict", "efficiency") else None)
    assert not (grid_root / "reports" / profile).exists()


def test_local_dry_run_asks_for_the_gpu_one_at_a_time_where_torch_sees_cuda(smoke_dry_run):
    """The local profile limits the `gpu` resource to 1; the steps that train or score models (negatives, train,
    predict, efficiency) ask for one where torch sees CUDA, so one runs at a time with CPU steps beside it, and for
    none where it does not; `gpus=1` asks for it on any machine, and the limit holds them to one at a time."""
    import torch

    local = REPO / "workflow" / "profiles" / "local"
    assert yaml.safe_load((local / "config.yaml").read_text())["resources"] == ["gpu=1"]
    root, jobs = smoke_dry_run
    steps = grid.steps(load_config("smoke"))
    on_gpu = {"negatives", "train", "predict", "efficiency"}
    assert {s.kind for s in steps if s.gpu} == on_gpu
    here = "1" if torch.cuda.is_available() else None
    assert {s.name: jobs[s.name]["resources"].get("gpu") for s in steps} == {
        s.name: here if s.kind in on_gpu else None for s in steps
    }
    proc = _snakemake(
        root, "--workflow-profile", str(local), "--cores", "2", "--config", "profile=smoke", "gpus=1", "-n"
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    asked = _jobs(proc.stdout + proc.stderr)
    assert {s.name: asked[s.name]["resources"].get("gpu") for s in steps} == {
        s.name: "1" if s.kind in on_gpu else None for s in steps
    }
    assert all("gpu" not in asked[rule]["resources"] for rule in ("html", "index"))


def test_dry_run_errors_name_the_config_value(grid_root):
    def error(*config):
        proc = _snakemake(grid_root, "--cores", "1", "-n", *(["--config", *config] if config else []))
        assert proc.returncode != 0
        return proc.stdout + proc.stderr

    assert "config value 'profile' is missing" in error()
    text = error("profile=smoke;touch x")
    assert (
        "config value 'profile': expected one of laptop, laptop-3seeds, laptop-full, paper, paper2023, paper_seeds, smoke"
        in text
    )
    assert "'smoke;touch x'" in text and not (grid_root / "x").exists()
    assert "config value 'train_gpus': expected a whole number of at least 1, got 'two'" in error(
        "profile=smoke", "train_gpus=two"
    )
    assert "config value 'thread': unknown key; expected profile, threads, gpus, train_gpus" in error(
        "profile=smoke", "thread=2"
    )


def test_a_deleted_predictions_file_makes_its_run_and_what_reads_it_again(tmp_root):
    """Every output present and newer than what it reads: nothing to do. One 03 run's Predictions file deleted:
    that run, the notebooks that read it, their pages and the index are made again, nothing else."""
    steps = grid.steps(load_config("smoke"))
    pages = [s.name for s in steps if s.notebook]
    made = (
        [f for s in steps for f in s.outputs]
        + [f"reports/smoke/{p}.html" for p in pages]
        + ["reports/smoke/index.html"]
    )
    t = time.time() + 60
    for i, rel in enumerate([*made, "reports/smoke/index.json"]):
        path = tmp_root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "{}" if not rel.endswith("index.json") else json.dumps({"sha256": sha256_file(tmp_root / made[-1])})
        )
        os.utime(path, (t + i, t + i))
    proc = _snakemake(tmp_root, "--cores", "2", "--config", "profile=smoke", "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr

    run = next(s for s in steps if s.name == "03_train-sngp-chitchat")
    (tmp_root / run.outputs[3]).unlink()
    proc = _snakemake(tmp_root, "--cores", "2", "--config", "profile=smoke", "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _jobs(proc.stdout + proc.stderr)
    again = ["03_train-sngp-chitchat", "04_calibration", "05_risk_aware", "06_nota", "08_beyond", "07_efficiency"]
    assert set(jobs) == {*again, "html", "index", "all"}
    counts = re.search(r"\n\s*html\s+(\d+)\n", proc.stdout + proc.stderr)
    assert counts and int(counts.group(1)) == len(again)


# ---------------------------------------------------------------- the smoke graph, for real


@pytest.mark.slow  # minutes: it runs every notebook, as nbval does in `make test`; run it with `pytest -m slow`
def test_smoke_graph_runs_with_the_local_executor(tmp_root):
    """Every notebook of the smoke profile, each model trained once in its own job, two jobs at a time."""
    cfg = load_config("smoke")
    proc = _snakemake(
        tmp_root,
        "--workflow-profile",
        str(REPO / "workflow" / "profiles" / "local"),
        "--cores",
        "2",
        "--config",
        "profile=smoke",
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-8000:]
    report = tmp_root / "reports" / "smoke"
    for step in grid.steps(cfg):
        for out in step.outputs:
            assert (tmp_root / out).is_file(), out
        if step.notebook:
            assert (report / f"{step.name}.html").is_file(), step.name
    assert "<html" in (report / "index.html").read_text(encoding="utf-8")[:200]
    assert not list(report.glob(".tmp-*"))

    # One marker per model, naming its folder in the model cache; no model folder besides them.
    models = grid.grid_models(cfg)
    folders = set()
    for m in models:
        marker = json.loads((tmp_root / grid.marker_path("smoke", m.name)).read_text())
        assert (tmp_root / marker["model_dir"] / "model.safetensors").is_file()
        folders.add(marker["model_dir"])
    assert len(folders) == len(models)
    cache = tmp_root / "runs" / "smoke" / "models"
    assert {str(p.relative_to(tmp_root)) for p in cache.glob("*/*") if p.is_dir()} == folders


# ---------------------------------------------------------------- code inputs


def test_a_step_reruns_when_the_code_it_reaches_changes_and_the_estimate_counts_what_snakemake_runs(tmp_root):
    """In a checkout of its own (lib/, notebooks/, workflow/), every output made: a comment edited in the losses
    leaves every step's code input as it was (its mtime) and snakemake and the estimate plan nothing; a constant
    only the focal loss reads reruns the steps of the rankers trained with it, the same steps in both."""
    for folder in ("lib", "notebooks", "workflow"):
        shutil.copytree(REPO / folder, tmp_root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, CALIBRANK_ROOT=str(tmp_root), PYTHONPATH=str(tmp_root / "lib"), PYTHONDONTWRITEBYTECODE="1")
    losses = tmp_root / "lib" / "calibrank" / "study" / "model" / "losses.py"

    def planned() -> set[str]:  # the steps snakemake would run
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "-s",
                "workflow/Snakefile",
                "--cores",
                "2",
                "--config",
                "profile=smoke",
                "-n",
            ],
            cwd=tmp_root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return set(_jobs(proc.stdout + proc.stderr)) - {"html", "index", "all"}

    def estimated() -> set[str]:  # the steps the estimate counts (calibrank.study.pipeline.eta.plan)
        code = (
            "import json; from calibrank.study.pipeline.eta import plan; from calibrank.study.settings.config import load_config; "
            "print(json.dumps([s.name for s in plan(load_config('smoke')) if s.pending and s.name != 'index']))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_root, env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return set(json.loads(proc.stdout.strip().splitlines()[-1]))

    steps = grid.steps(load_config("smoke"))
    assert len(planned()) == len(steps)  # nothing made yet: every step (and the code keys are written)
    made = [f for s in steps for f in s.outputs] + [f"reports/smoke/{s.name}.html" for s in steps if s.notebook]
    keys = {s.name: tmp_root / s.code for s in steps}
    mtimes = {name: p.stat().st_mtime_ns for name, p in keys.items()}
    t = max(mtimes.values()) / 1e9  # made after the code keys were written, each after what it reads, in the past
    for i, rel in enumerate([*made, "reports/smoke/index.html"], start=1):
        path = tmp_root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        os.utime(path, (t + i / 1000, t + i / 1000))
    time.sleep(max(0.0, t + len(made) / 1000 + 0.1 - time.time()))

    text = losses.read_text(encoding="utf-8")
    losses.write_text(text.replace("\nADAPTIVE_LOW = 5.0\n", "\nADAPTIVE_LOW = 5.0  # a note\n"), encoding="utf-8")
    assert planned() == set() == estimated()
    assert {name: p.stat().st_mtime_ns for name, p in keys.items()} == mtimes

    losses.write_text(text.replace("\nADAPTIVE_HIGH = 3.0\n", "\nADAPTIVE_HIGH = 2.0\n"), encoding="utf-8")
    again = planned()
    assert again == estimated()
    focal = {
        s.name for s in steps if (s.model.ranker if s.model else s.parameters.get("ranker")) in ("focal", "gpf_bert")
    }
    assert focal and {s.name for s in steps if s.name.startswith(("train-", "03_train-"))} & again == focal
    assert {name for name, p in keys.items() if p.stat().st_mtime_ns != mtimes[name]} == focal
