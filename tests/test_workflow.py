"""The cluster path: ``workflow/Snakefile`` plans the profile's grid, and runs the smoke grid end to end.

The dry runs check the plan against counts worked out here from the profile (one training job
per model, never two for the ``bert`` model that ``mc_dropout``, ``temperature`` and ensemble
member 0 share; one job per further ensemble member; one 03 run per ranker x corpus x seed).
The smoke grid runs for real with the local executor on 2 cores in a throw-away project root,
as a cluster would run it, and must leave every notebook, its HTML page and the index: that test
runs every notebook again (as nbval does in ``make test``) and is marked ``slow``, off by default
(``pytest -m slow tests/test_workflow.py`` runs it); the dry runs stay in the default set.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from calibrank import grid
from calibrank.config import load_config, train_runs, training_seeds

REPO = Path(__file__).resolve().parent.parent
SNAKEFILE = REPO / "workflow" / "Snakefile"
SHARES_BERT = {"bert", "mc_dropout", "temperature", "ensemble"}


def _snakemake(root: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, CALIBRANK_ROOT=str(root))
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _job_counts(output: str) -> dict[str, int]:
    """The ``Job stats`` table of a snakemake run: jobs per rule."""
    table = output[output.index("Job stats:"):]
    counts = {}
    for line in table.splitlines()[3:]:
        m = re.fullmatch(r"\s*(\w+)\s+(\d+)\s*", line)
        if not m:
            break
        counts[m.group(1)] = int(m.group(2))
    return counts


def _expected(cfg) -> dict[str, int]:
    names = {r.value for r in cfg.rankers.names}
    cells = len(cfg.rankers.train_corpora) * len(training_seeds(cfg))
    own_models = len(names - SHARES_BERT) + (1 if names & SHARES_BERT else 0)
    members = cfg.rankers.ensemble.members - 1 if "ensemble" in names else 0
    runs = len(names) * cells
    counts = {"data": 1, "negatives": 1, "train": own_models * cells, "train_member": members * cells,
              "predict": runs, "analysis": 3, "efficiency": 1, "html": 2 + runs + 4, "index": 1, "all": 1}
    counts = {k: v for k, v in counts.items() if v}
    counts["total"] = sum(counts.values())
    return counts


@pytest.fixture
def grid_root(tmp_root) -> Path:
    """The throw-away root, with one more profile: the paper's with three training seeds."""
    raw = yaml.safe_load((tmp_root / "params" / "paper.yaml").read_text())
    raw["profile"] = "paper_seeds"
    raw.setdefault("rankers", {})["seeds"] = [42, 7, 1234]
    (tmp_root / "params" / "paper_seeds.yaml").write_text(yaml.safe_dump(raw))
    return tmp_root


@pytest.mark.parametrize("profile", ["paper", "laptop", "paper_seeds"])
def test_dry_run_plans_one_job_per_model_and_run(grid_root, profile):
    cfg = load_config(profile)
    proc = _snakemake(grid_root, "--workflow-profile", str(REPO / "workflow" / "profiles" / "slurm"),
                      "--config", f"profile={profile}", "-n")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    counts = _job_counts(proc.stdout + proc.stderr)
    assert counts == _expected(cfg)
    assert counts["predict"] == len(train_runs(cfg))
    # GPU jobs ask for a GPU through the slurm plugin's `gpu` resource (sbatch --gpus)
    text = proc.stdout + proc.stderr
    assert re.search(r"rule train:.*?resources:[^\n]*gpu=1", text, re.S)
    assert not (grid_root / "reports" / profile).exists()  # a dry run writes nothing


def test_dry_run_errors_name_the_config_value(grid_root):
    proc = _snakemake(grid_root, "--cores", "1", "-n")
    assert proc.returncode != 0 and "'profile' is missing" in proc.stdout + proc.stderr
    proc = _snakemake(grid_root, "--cores", "1", "-n", "--config", "profile=nosuch")
    assert proc.returncode != 0 and "config value 'profile'" in proc.stdout + proc.stderr and "known profiles" in proc.stdout + proc.stderr
    proc = _snakemake(grid_root, "--cores", "1", "-n", "--config", "profile=smoke", "train_gpus=two")
    assert proc.returncode != 0 and "config value 'train_gpus'" in proc.stdout + proc.stderr


def test_grid_models_share_the_bert_model(grid_root):
    cfg = load_config("paper_seeds")
    models = {m.name: m for m in grid.grid_models(cfg)}
    runs = grid.run_models(cfg)
    assert runs["mc_dropout-msdialog"] == runs["temperature-msdialog"] == runs["bert-msdialog"] == ["bert-msdialog-seed42"]
    assert runs["ensemble-mantis-seed7"][0] == "bert-mantis-seed7"
    assert runs["ensemble-mantis-seed7"][1:] == [f"ensemble-mantis-seed7-member{i}" for i in range(1, cfg.rankers.ensemble.members)]
    assert set(models) == {name for names in runs.values() for name in names}
    assert models["ensemble-mantis-seed7-member2"].args("paper_seeds") == \
        ["train", "paper_seeds", "ensemble", "mantis", "--seed", "7", "--member", "2"]
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
    assert grid.main(["train", "smoke", "ensemble", "chitchat"]) == 2
    assert "member: ensemble needs --member" in capsys.readouterr().err
    assert grid.main(["train", "nosuch", "bert", "chitchat"]) == 2
    assert "known profiles" in capsys.readouterr().err
    assert grid.main(["list", "smoke"]) == 0
    assert "bert-chitchat-seed0 train smoke bert chitchat --seed 0" in capsys.readouterr().out


def test_members_lists_each_ensemble_run_with_its_own_members(grid_root, capsys):
    assert grid.main(["members", "paper_seeds"]) == 0
    lines = dict(line.split("=") for line in capsys.readouterr().out.split())
    cfg = load_config("paper_seeds")
    runs = grid.run_models(cfg)
    assert set(lines) == {r for r in runs if r.startswith("ensemble-")}
    for run, members in lines.items():
        assert members.split(",") == runs[run][1:]  # member 0 is the bert model, a dependency of its own


@pytest.mark.slow  # minutes: it runs every notebook, as nbval does in `make test`; run it with `pytest -m slow`
def test_smoke_grid_runs_with_the_local_executor(tmp_root):
    """Every notebook of the smoke profile, each model trained once in its own job, two jobs at a time."""
    cfg = load_config("smoke")
    proc = _snakemake(tmp_root, "--workflow-profile", str(REPO / "workflow" / "profiles" / "local"),
                      "--cores", "2", "--config", "profile=smoke", timeout=2400)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-8000:]
    report = tmp_root / "reports" / "smoke"
    steps = ["01_data", "02_negatives", *[f"03_train-{r}" for r in train_runs(cfg)],
             "04_calibration", "05_risk_aware", "06_nota", "07_efficiency"]
    for step in steps:
        assert (report / f"{step}.ipynb").is_file(), step
        assert (report / f"{step}.html").is_file(), step
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


# ---------------------------------------------------------------- the Makefile (dry runs)


@pytest.fixture
def make_root(tmp_path) -> Path:
    """A project root for `make -n`: the Makefile, params and notebooks, the installed .venv, nothing made yet."""
    root = tmp_path / "project"
    root.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        (root / name).write_bytes((REPO / name).read_bytes())
        os.utime(root / name, (946684800, 946684800))  # older than the .venv's install stamp
    for folder in ("params", "notebooks"):
        (root / folder).mkdir()
        for f in (REPO / folder).iterdir():
            (root / folder / f.name).write_bytes(f.read_bytes())
            os.utime(root / folder / f.name, (946684800, 946684800))
    (root / ".venv").symlink_to(REPO / ".venv")
    return root


def _make(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k not in ("PROFILE", "DATASET")}
    return subprocess.run(["make", "--no-print-directory", *args], cwd=root, env=dict(env, CALIBRANK_ROOT=str(root)),
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("value", ["smoke $(touch x)", "smoke;touch x", "$(shell touch x)", "smoke $$(touch x)", "../smoke", "nosuch"])
def test_make_refuses_a_profile_or_dataset_that_is_not_a_known_name(make_root, value):
    proc = _make(make_root, "-n", "nb-01_data", f"PROFILE={value}")
    assert proc.returncode != 0 and "PROFILE: expected one of " in proc.stderr
    listed = proc.stderr.split("expected one of ", 1)[1].split(" (params", 1)[0].split()
    assert sorted(listed) == sorted(p.stem for p in (REPO / "params").glob("*.yaml"))
    proc = _make(make_root, "-n", "data", f"DATASET={value}")
    assert proc.returncode != 0 and "DATASET: expected one of msdialog mantis udc_dstc8" in proc.stderr
    assert not (make_root / "x").exists()


def test_make_prints_a_profile_error_first_and_alone(make_root):
    raw = yaml.safe_load((make_root / "params" / "smoke.yaml").read_text())
    raw["profile"] = "broken"
    raw["training"]["epochz"] = 2
    (make_root / "params" / "broken.yaml").write_text(yaml.safe_dump(raw))
    proc = _make(make_root, "-n", "nb-03_train-bert-chitchat", "PROFILE=broken")
    assert proc.returncode != 0
    assert "epochz" in proc.stderr and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1


def _papermill_outputs(dry_run: str) -> list[str]:
    """The notebooks a dry run would execute, by step name."""
    return re.findall(r"/\.tmp-([\w-]+)\.pid\$\$@\$\(uname -n[^)]*\)\.ipynb", dry_run)


def test_make_reruns_the_03_step_whose_predictions_file_was_deleted(make_root):
    cfg = load_config("smoke")
    runs_ = train_runs(cfg)
    steps = ["01_data", "02_negatives", *[f"03_train-{r}" for r in runs_], "04_calibration", "05_risk_aware", "06_nota",
             "08_beyond", "07_efficiency"]
    listing = subprocess.run([sys.executable, "-m", "calibrank.runs", "predictions", "smoke"], capture_output=True, text=True,
                             env=dict(os.environ, CALIBRANK_ROOT=str(make_root)), check=True).stdout
    predictions = {line.split()[0]: line.split()[1:] for line in listing.splitlines()}
    assert set(predictions) == set(runs_) and all(predictions.values())
    members = subprocess.run([sys.executable, "-m", "calibrank.grid", "members", "smoke"], capture_output=True, text=True,
                             env=dict(os.environ, CALIBRANK_ROOT=str(make_root)), check=True).stdout.split()
    # Everything made, in the order make would have made it, after the .venv was installed.
    t = int((REPO / ".venv" / ".calibrank-installed").stat().st_mtime) + 1
    made = [f"reports/smoke/{s}.ipynb" for s in steps[:2]]
    made += [f"runs/smoke/grid/{m}.json" for tok in members for m in tok.split("=")[1].split(",")]
    made += [p for files in predictions.values() for p in files]
    made += [f"reports/smoke/{s}.ipynb" for s in steps[2:]] + [f"reports/smoke/{s}.html" for s in steps]
    made += ["reports/smoke/index.html"]
    for i, rel in enumerate(made):
        path = make_root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        os.utime(path, (t + i, t + i))

    proc = _make(make_root, "-n", "index", "PROFILE=smoke")
    assert proc.returncode == 0, proc.stderr
    assert _papermill_outputs(proc.stdout) == []  # all up to date

    run = "sngp-chitchat"
    (make_root / predictions[run][0]).unlink()
    proc = _make(make_root, "-n", "index", "PROFILE=smoke")
    assert proc.returncode == 0, proc.stderr
    assert sorted(_papermill_outputs(proc.stdout)) == sorted([f"03_train-{run}", "04_calibration", "05_risk_aware", "06_nota",
                                                              "08_beyond", "07_efficiency"])
    assert "calibrank.report smoke" in proc.stdout


def test_two_makes_of_one_notebook_write_different_temporary_files(make_root):
    proc = _make(make_root, "-n", "nb-02_negatives", "PROFILE=smoke")
    assert proc.returncode == 0, proc.stderr
    # the shell's pid ($$) and host name the temporary notebook; the sweep before it spares live ones
    assert "reports/smoke/.tmp-02_negatives.pid$$@$(uname -n" in proc.stdout
    assert re.search(r"calibrank.runs sweep --started \d+ reports/smoke", proc.stdout)
